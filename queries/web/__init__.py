"""The HTTP side of the queries: the JSON API (`api`), the app that routes it beside `/healthz` and
`/metrics` (`app`) and the server that runs it in a thread (`server`).

May import the queries' own modules, the readers' errors and the web stack (Starlette, uvicorn);
the CLI imports it, never the reverse.
"""
