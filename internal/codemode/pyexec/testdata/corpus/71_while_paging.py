items = []
page = 0
while page is not None:
    r = search_products(query="laptop", page=page)
    items.extend(r["items"])
    page = r["next_page"]
{"count": len(items), "in_stock": [i["name"] for i in items if i["stock"] > 0]}
