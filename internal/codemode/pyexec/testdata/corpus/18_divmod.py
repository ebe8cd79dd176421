o = list_orders(2)
total_cents = int(round(sum(x["amount"] for x in o) * 100))
dollars, cents = divmod(total_cents, 100)
minutes, seconds = divmod(3725, 60)
f"${dollars}.{cents:02d} and {minutes}m{seconds}s"
