"""The web playground: a single-page app on the gateway's HTTP port.

``GET /`` gives a browser the app and anything else neuro-san's health body;
``GET /playground/…`` serves the app's assets (hand-written, dependency-free JavaScript
and CSS in ``static/``). The app itself talks only to the public HTTP API
(``/api/v1/list``, ``function``, ``connectivity``, ``streaming_chat``), so it works the
same in ``neuro-san serve`` and in front of the standalone gateway.

:mod:`~gateway.playground.frontend` is the front-end (routes, headers, content negotiation),
:mod:`~gateway.playground.assets` finds and checks the static files, :mod:`~gateway.playground.root_health`
is the health answer at ``/``, and :mod:`~gateway.playground.switch` reads ``--no-playground`` /
``AGENT_PLAYGROUND``.
"""

from typing import TYPE_CHECKING, Any

from gateway.playground.switch import playground_enabled

if TYPE_CHECKING:
    from gateway.playground.frontend import make_frontend

__all__ = ["make_frontend", "playground_enabled"]


def __getattr__(name: str) -> Any:
    # The front-end (aiohttp, grpc) loads only when a server starts, so the CLI's
    # argument parsing (which adds --no-playground) stays cheap for client commands.
    if name == "make_frontend":
        from gateway.playground import frontend

        return frontend.make_frontend
    raise AttributeError(name)
