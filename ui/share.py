"""The Share tab: a link to the exact view on the page, and opening such a link (`?state=…`) when the page loads."""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import Explorer, ExplorerError, ExplorerState

from .panel import Panel as Base
from .panel import Refresh, escaped, tab
from .runtime import run_gpu
from .settings import RESTORED, restored_values


def share_markdown(state: ExplorerState) -> str:
    """A link to this exact view (model, sentence, step, strategy, masks, silenced heads, selected view)."""
    token = state.to_link()
    return (
        f"[Open this exact view](?state={token}) — copy the link to hand it to someone.\n\n"
        f"The state token (add `?state=` and it to the page address): `{token}`"
    )


class Panel(Base):
    def __init__(self, page):
        super().__init__(page)
        with tab("Share"):
            self.link = gr.Markdown(elem_id="share-link")
        self.token = gr.State("")  # the `state` query parameter the page was opened with
        self.outputs = [self.link]

    def refresh(self, frame: Refresh) -> dict[Component, Any]:
        return {self.link: share_markdown(frame.state)}

    def cleared(self, message: str) -> dict[Component, Any]:
        return {self.link: ""}

    def wire(self) -> None:
        page = self.page
        restored = [page.controls[name] for name in RESTORED]
        page.demo.load(self.link_token, None, self.token, api_visibility="private").then(
            run_gpu(self.restore), [self.token, *page.inputs], [*restored, *page.outputs], api_visibility="private"
        )

    @staticmethod
    def link_token(request: gr.Request) -> str:
        return dict(request.query_params).get("state", "") if request is not None else ""

    def restore(self, token: str, explorer, *values) -> dict[Component, Any]:
        """On page load: the state of a shared link (?state=…), or the page's own settings."""
        page = self.page
        if not token:
            return page.apply(explorer, *values)
        try:
            explorer = Explorer(page.registry, ExplorerState.from_link(token))
        except ExplorerError as error:
            return page.apply(None, *values) | {page.status: escaped(f"This link cannot be opened: {error}")}
        controls = {page.controls[name]: value for name, value in restored_values(explorer.state).items()}
        return controls | page.refreshed(explorer)
