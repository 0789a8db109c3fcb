"""The tabs of the views, one module each, in the order of the tab bar (`TABS`).

Each entry of `TABS` builds its tab and answers with the panels it made: one for a tab that is one view, several
for the Experiments tab, whose views are its sections (`PageAccess.section`). Seven tabs fit one row beside the
controls at 1024 px as at 1400 px; where they do not (a phone), they wrap onto a second row: every view stays one
click away.
"""

from collections.abc import Callable

from ..panel import PageAccess, Panel
from .attention import AttentionTab
from .beam import BeamTab
from .experiments import experiments
from .inside import InsideTab
from .masks import MasksTab
from .positions import PositionsTab
from .train import TrainTab
from .twins import TwinsTab
from .walkthrough import WalkthroughTab
from .why import why_tab


def alone(panel: type[Panel]) -> Callable[[PageAccess], list[Panel]]:
    """A tab that is one view: its panel's own."""
    return lambda page: [panel(page)]


TABS: tuple[Callable[[PageAccess], list[Panel]], ...] = (
    alone(AttentionTab),
    alone(InsideTab),
    why_tab,
    alone(WalkthroughTab),
    experiments,
    alone(BeamTab),
    alone(TrainTab),
)

__all__ = [
    "TABS",
    "AttentionTab",
    "BeamTab",
    "InsideTab",
    "MasksTab",
    "PositionsTab",
    "TrainTab",
    "TwinsTab",
    "WalkthroughTab",
]
