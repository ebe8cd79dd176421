"""A pandas DataFrame as the sample (the reference's DataFrame example): the
client writes it to CSV (pandas is used only because you passed one), the
job is generated from it, and the script runs again on another DataFrame
and as a named task with settings of its own.

    PYTHONPATH=python python3 python/examples/dataframe.py
"""

import pandas as pd

from autocoder import AutoCoderAgent, InvalidRequestError

agent = AutoCoderAgent(name="summarize-sales-df", model="gpt-4.1", max_iterations=5, temperature=0.2, seed=7)

january = pd.DataFrame({
    "date": ["2024-01-01", "2024-01-02", "2024-01-03"],
    "region": ["north", "south", "north"],
    "product": ["widget", "gizmo", "widget"],
    "quantity": [10, 5, 8],
    "price": [2.5, 4.0, 2.5],
})
february = pd.DataFrame({
    "date": ["2024-02-01", "2024-02-02"],
    "region": ["east", "east"],
    "product": ["gadget", "gadget"],
    "quantity": [1, 3],
    "price": [10.0, 10.0],
})

result = agent.generate(
    prompt="Read the CSV and compute total_revenue, total_units and row_count.",
    samples={"sales": january},
    outputs={"total_revenue": float, "total_units": int, "row_count": int},
)
if not result.success:
    raise SystemExit("code generation failed: %s" % result.error)
print("generated from the DataFrame:", result.outputs)
print("original sample:", result.original_samples["sales"].download("."))

print("february:", result.run(sales=february, timeout=60))
task = result.as_task("monthly-sales", resources={"memory": "256Mi"}, env_vars={"REPORT_REGION": "east"})
print("task:", task(sales=february))
for bad in ({"resources": {"memory": "lots"}}, {"sales": "/nonexistent.csv"}):
    try:
        result.run(**bad)
    except InvalidRequestError as e:  # the setting or argument at fault is named
        print("refused:", e.field, "|", e)
