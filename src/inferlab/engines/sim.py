"""inferlab's reference engine (``inferlab sim serve``): SIMULATED, with known timing."""

from inferlab.engines.base import EngineSpec, register

SPEC = register(EngineSpec(name="sim", description="inferlab reference engine (simulated)"))
