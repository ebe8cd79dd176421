from collections import Counter, defaultdict
orders = list_orders(1) + list_orders(2)
by_status = Counter(o["status"] for o in orders)
totals = defaultdict(float)
for o in orders:
    totals[o["status"]] += o["amount"]
{"counts": dict(by_status), "most": by_status.most_common(1)[0][0], "totals": {k: round(v, 2) for k, v in totals.items()}}
