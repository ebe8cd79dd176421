report = {}
for uid in (1, 2, 3):
    u = get_user(uid)
    orders = list_orders(uid)
    report[u["name"]] = {
        "orders": len(orders),
        "spent": round(sum(o["amount"] for o in orders if o["status"] != "cancelled"), 2),
        "latest": max((o["date"] for o in orders), default=None),
    }
report
