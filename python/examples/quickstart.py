"""Quick start: the reference's first example (flyteplugins-codegen's
README, "Quick start"), on autocoder, with this client.

A CSV sample, three typed outputs, then result.run() on the sample. Run it
against a coordinator's HTTP API:

    export AUTOCODER_URL=http://127.0.0.1:8080 AUTOCODER_TOKEN=...   # scope submit
    PYTHONPATH=python python3 python/examples/quickstart.py examples/sales/sales.csv
"""

import sys

from autocoder import AutoCoderAgent

agent = AutoCoderAgent(
    model="gpt-4.1",
    name="summarize-sales",
    resources={"cpu": 1, "memory": "1Gi"},
    litellm_params={"temperature": 0.2, "max_tokens": 4096},
    max_iterations=5,
)


def process_data(csv_file):
    result = agent.generate(
        prompt="Read the CSV and compute total_revenue, total_units and row_count.",
        samples={"sales": csv_file},
        outputs={"total_revenue": float, "total_units": int, "row_count": int},
    )
    if not result.success:
        raise SystemExit("code generation failed: %s" % result.error)
    print("job %s: %d attempt(s), %d+%d tokens, cost %.6f" % (
        result.job_id, result.attempts, result.total_input_tokens, result.total_output_tokens, result.total_cost))
    print("outputs of the acceptance run:", result.outputs)
    return result.run()


if __name__ == "__main__":
    total_revenue, total_units, row_count = process_data(sys.argv[1] if len(sys.argv) > 1 else "examples/sales/sales.csv")
    print("run: total_revenue=%.2f total_units=%d row_count=%d" % (total_revenue, total_units, row_count))
