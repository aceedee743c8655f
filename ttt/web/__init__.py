"""The browser front end of ``python -m ttt.serve``: games kept in memory (``ttt.web.games``), the HTTP
API (``ttt.web.app``), the caps on one client's work (``ttt.web.limits``) and the one page it serves
(``ttt/web/static``, no outside resources)."""
