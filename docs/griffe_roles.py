"""Griffe extension: Sphinx cross-reference roles in docstrings as inline code.

The library's docstrings name other objects the Sphinx way (``:class:`Dynashard```,
``:meth:`~dynashard.facade.Dynashard.grow```), which Python's ``help()`` and editors
show as written. mkdocstrings renders docstrings as Markdown, where a role would show
as ``:meth:`` text; this extension rewrites each role to inline code when the API
reference is built (``mkdocs.yml``, handler option ``extensions``), so the docstrings
stay as they are. A leading ``~`` keeps the last dotted part only, as Sphinx shows it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")


def plain_roles(text: str) -> str:
    """Rewrite every Sphinx cross-reference role of a docstring to inline code.

    Parameters
    ----------
    text : str
        A docstring.

    Returns
    -------
    str
        The docstring with ``:role:`target``` as ```target``` and ``:role:`~a.b```
        as ```b```; any other text unchanged.

    Examples
    --------
    >>> plain_roles("See :meth:`~dynashard.facade.Dynashard.grow` and :class:`Page`.")
    'See `grow` and `Page`.'
    """

    def replace(match: re.Match[str]) -> str:
        short, target = match.group(1), match.group(2)
        return f"`{target.rsplit('.', 1)[-1] if short else target}`"

    return _ROLE.sub(replace, text)


class SphinxRolesAsCode(griffe.Extension):
    """Rewrite the roles of every docstring griffe loads (see `plain_roles`)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the roles of one object's docstring, if it has one.

        Parameters
        ----------
        obj : griffe.Object
            The module, class, function or attribute griffe has just loaded.
        **kwargs : Any
            The hook's other arguments (unused).
        """
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)
