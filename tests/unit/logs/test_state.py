"""The log state's reservoir (``logs.state``) is the textbook one."""

from __future__ import annotations


def test_reservoir_is_the_textbook_one() -> None:
    """Each level keeps a uniform reservoir: the same samples as Algorithm R written with
    ``random.randrange`` on an identically seeded generator."""
    import random

    from inferlab.logs.state import LEVEL_CAP, LogState

    st = LogState(path="x")
    rng = random.Random(0)
    ref: list[float] = []
    for i in range(5 * LEVEL_CAP):
        st.add_point(i + 1, "decode", "", None, 7, None, float(i))
        if len(ref) < LEVEL_CAP:
            ref.append(float(i))
        elif (j := rng.randrange(i + 1)) < LEVEL_CAP:
            ref[j] = float(i)
    assert st.levels[7].samples == ref and st.levels[7].n == 5 * LEVEL_CAP
