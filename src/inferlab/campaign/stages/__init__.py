"""The stages one config goes through before it is measured, one module a stage.

Each module holds one :class:`~inferlab.campaign.context.Stage` (a context manager over the
:class:`~inferlab.campaign.context.ConfigContext`, left in reverse order) with the steps it
takes; ``stages.table.STAGES`` lists them in the order they start. ``run``, ``up`` and
``run --ray`` all step through that one table.
"""

__all__: list[str] = []  # no face: its modules are imported by name
