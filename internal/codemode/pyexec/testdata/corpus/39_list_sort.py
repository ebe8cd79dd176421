items = search_products("laptop")["items"] + search_products("laptop", page=1)["items"]
items.sort(key=lambda i: i["price"], reverse=True)
by_name = sorted(items, key=lambda i: i["name"])
([i["name"] for i in items], by_name[0]["name"])
