"""`Table`: a pandas DataFrame that a notebook shows readably (pandas is imported here, at the edge)."""

from __future__ import annotations

import pandas as pd

from ._cells import frame_html


class Table(pd.DataFrame):
    """A DataFrame shown whole in a notebook: texts left-aligned and never cut, "—" where a value is absent.

    Everything else is pandas: selecting columns, filtering or `head()` give a Table again.
    """

    @property
    def _constructor(self) -> type[Table]:
        return Table

    def _repr_html_(self) -> str | None:
        flat = not isinstance(self.index, pd.MultiIndex) and not isinstance(self.columns, pd.MultiIndex)
        if not flat:  # pivots keep pandas' own layout
            # pandas-stubs leave out DataFrame._repr_html_ (private, but the notebook display hook)
            html: str | None = super()._repr_html_()  # type: ignore[misc]
            return html
        return frame_html(
            self, max_rows=pd.get_option("display.max_rows") or 60, shown_rows=pd.get_option("display.min_rows") or 10
        )
