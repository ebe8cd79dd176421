"""autocoder's Python client: the reference's AutoCoderAgent API
(flyteplugins-codegen) over autocoder's HTTP API, standard library only.

    from autocoder import AutoCoderAgent

    agent = AutoCoderAgent(name="summarize-sales", model="gpt-4.1")
    result = agent.generate(
        prompt="Read the CSV and compute total_revenue, total_units and row_count.",
        samples={"sales": "sales.csv"},            # a path, a File, or a pandas DataFrame
        outputs={"total_revenue": float, "total_units": int, "row_count": int},
    )
    total_revenue, total_units, row_count = result.run()

The HTTP API is at AUTOCODER_URL (default http://127.0.0.1:8080), with the
token in AUTOCODER_TOKEN (scope submit). docs/clients.md has the rest.
"""

from .agent import AutoCoderAgent, cancel, result_of
from .errors import (AuthError, AutoCoderError, InvalidRequestError, NotFoundError, RunError, UnavailableError,
                     WaitTimeout)
from .result import CodeGenEvalResult, Solution, Task
from .types import Dir, File, Resources

__all__ = [
    "AutoCoderAgent", "result_of", "cancel", "CodeGenEvalResult", "Solution", "Task", "File", "Dir", "Resources",
    "AutoCoderError", "InvalidRequestError", "UnavailableError", "AuthError", "NotFoundError", "RunError",
    "WaitTimeout",
]
