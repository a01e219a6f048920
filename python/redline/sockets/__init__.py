"""sockets: WebSocket load (``redline run ws://...``, :func:`websocket`): N sockets or messages
a second across them, replies matched and timed, messages counted both ways
(docs/protocols.md)."""

from redline.sockets.result import SocketResult
from redline.sockets.run import websocket

__all__ = ["SocketResult", "websocket"]
