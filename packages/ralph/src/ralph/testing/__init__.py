"""A scripted stand-in for the models behind the agent CLIs, for tests and the demo.

`model_server` serves it over HTTP; `scenario` parses the JSON scripts it plays; `engine`
decides each reply; `dialects` read each API's requests and write its replies (Anthropic
Messages, OpenAI Responses, OpenAI chat completions, Gemini), `wire` holding the reply values
and their Messages API bytes. AGENTS.md tells how to point each CLI at the server offline.
"""

from __future__ import annotations
