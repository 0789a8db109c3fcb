"""The tabs of the views, one module each, in the order of the tab bar (`TABS`).

Where the views' column is too narrow for all of them (beside the controls, the views have 60% of the page: five
tabs at 1400 px, three at 1024), the last ones are in its menu ("More tabs"); the walkthrough stays in sight.
"""

from .attention import AttentionTab
from .beam import BeamTab
from .inside import InsideTab
from .masks import MasksTab
from .positions import PositionsTab
from .share import ShareTab
from .train import TrainTab
from .twins import TwinsTab
from .walkthrough import WalkthroughTab

TABS = (AttentionTab, InsideTab, WalkthroughTab, MasksTab, PositionsTab, TrainTab, TwinsTab, BeamTab, ShareTab)

__all__ = [
    "TABS",
    "AttentionTab",
    "BeamTab",
    "InsideTab",
    "MasksTab",
    "PositionsTab",
    "ShareTab",
    "TrainTab",
    "TwinsTab",
    "WalkthroughTab",
]
