"""What the figures use of Plotly's Python internals, written against plotly `PLOTLY_VERSION` (requirements-base.txt
pins it): one function, which Plotly has no public way to call on plain data.

The figures are plain dicts, not `graph_objects` (`base.Figure`), and their numpy arrays go to the browser as
plotly.js's base64 typed arrays (`{"dtype": "f4", "bdata": …}`), as a `go.Figure` writes them. The public way there
is `go.Figure(data).to_dict()`, which checks every property again: the cost the plain figures avoid. So the page
calls the function `to_dict` calls, `_plotly_utils.utils.convert_to_base64`. `tests/test_plotly_internals.py` fails
when plotly changes under it: a new plotly means reading this again against its source.
"""

from __future__ import annotations

from typing import Any

from _plotly_utils.utils import convert_to_base64

PLOTLY_VERSION = "7.1.0"


def with_typed_arrays(figure: dict[str, Any]) -> dict[str, Any]:
    """`figure` (Plotly's JSON in Python values, changed in place) with every numpy array written as plotly.js's
    base64 typed array, as `go.Figure.to_dict` writes them (64-bit integers narrowed where they fit, a range left as
    it is)."""
    convert_to_base64(figure)
    return figure
