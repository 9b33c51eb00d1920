"""The parts the stages, passes and drivers are made of: launch, files, plan, capture, clock,
capacity, rounds, ... (each over the bottom layer, ``campaign.context``)."""

__all__: list[str] = []  # no face: its modules are imported by name
