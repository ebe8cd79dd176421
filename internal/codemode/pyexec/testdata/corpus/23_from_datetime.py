from datetime import date, timedelta
orders = list_orders(1)
dates = [date.fromisoformat(o["date"]) for o in orders]
span = max(dates) - min(dates)
{"days": span.days, "next": (max(dates) + timedelta(days=30)).isoformat(), "weekday": dates[0].strftime("%A")}
