stock = {p["name"]: p["stock"] for p in search_products("laptop")["items"] + search_products("laptop", page=1)["items"]}
sorted(stock.items(), key=lambda kv: kv[1], reverse=True)[:3]
