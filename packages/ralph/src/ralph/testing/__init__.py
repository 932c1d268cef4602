"""A scripted stand-in for the Anthropic Messages API, for tests and the demo.

`model_server` serves it over HTTP; `scenario` parses the JSON scripts it plays; `engine`
decides each reply; `wire` turns a reply into SSE or JSON bytes.
"""

from __future__ import annotations
