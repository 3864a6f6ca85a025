"""Textual's stylesheet, without parsing again what did not change.

Textual refreshes all CSS whenever a mode's screen is first made (``App.refresh_css``),
though nothing changed: ``set_variables()`` with the same theme variables empties the
parse cache, and ``reparse()`` parses every source again in a fresh stylesheet. At launch
that was three full parses of every stylesheet (the first screen's registration, the
refresh, the first screen's widgets: 15-25 ms each on this repo's 2-vCPU VM, measured), and
two more the first time each view opened. Here the same variables keep what is parsed,
and ``reparse()`` then parses only the sources added since (a widget's DEFAULT_CSS the
first time it mounts). A theme change (new variables) re-parses everything, as before.
"""

from __future__ import annotations

from textual.css.stylesheet import Stylesheet


class KeptStylesheet(Stylesheet):
    def __init__(self, *, variables: dict[str, str] | None = None) -> None:
        super().__init__(variables=variables)
        self._theme = dict(variables or {})

    def set_variables(self, variables: dict[str, str]) -> None:
        if variables == self._theme:
            return  # the same theme: the rules parsed with it stand
        self._theme = dict(variables)
        super().set_variables(variables)  # empties the parse cache

    def reparse(self) -> None:
        # The parse cache answers for every source already parsed with these variables.
        self.parse()
