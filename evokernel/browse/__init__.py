"""The memory browser: a read-only local web UI over a bank (`evokernel browse`).

    from evokernel.browse import create_app, start
    app = create_app("memory.db")            # an ASGI app, for uvicorn or a test client
    server = start("memory.db", port=8001)   # or served from a thread, e.g. in a notebook
    print(server.url); ...; server.stop()

Pages: runs (options, progress, tokens and cost; a run in progress follows
its writer), tasks (attempts plotted, the lineage with diffs, the best kernel,
each step's verdict and feedback), memory items and skills (values replayed
from the steps, retrievals and what followed, admission evidence), LLM calls,
and search over the bank's FTS5 index. The bank is opened read-only, nothing
from it is ever run, every text is escaped, and it binds 127.0.0.1 unless
told otherwise.

Built on what the MCP server already brings (Starlette, uvicorn) with Jinja2
templates and Pygments highlighting; plots are matplotlib SVG, every asset is
served from this package. Datasette would browse the tables, but the views
here (lineage diffs, value replays, live runs) would each be a plugin.
"""

from ._app import create_app
from ._bank import Bank
from ._records import BrowseError
from ._serve import BrowseServer, ServeOptions, is_loopback, serve, start

__all__ = ["Bank", "BrowseError", "BrowseServer", "ServeOptions", "create_app", "is_loopback", "serve", "start"]
