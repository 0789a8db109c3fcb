"""The Experiments tab: change the model and compare, one section each, in the order of a lesson (the teacher's
guide, minutes 28 to 40): the masks and silenced heads, the positions, and the untrained twin."""

from __future__ import annotations

from ..i18n import T
from ..panel import PageAccess, Panel
from .masks import MasksTab
from .positions import PositionsTab
from .twins import TwinsTab

KEY = "experiments"


def experiments(page: PageAccess) -> list[Panel]:
    """The tab and its sections' panels."""
    with page.tab(T("Experiments"), KEY):
        return [MasksTab(page), PositionsTab(page), TwinsTab(page)]
