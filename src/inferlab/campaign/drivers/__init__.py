"""The drivers of the campaign pipeline on one host: ``run`` (``runner``, with ``interleave``),
``up``/``down`` and the demo; ``run --ray`` is ``cluster.campaign``'s."""

__all__: list[str] = []  # no face: its modules are imported by name
