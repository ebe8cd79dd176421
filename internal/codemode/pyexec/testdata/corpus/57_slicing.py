items = search_products("laptop", page=1)["items"]
nums = list(range(20))
{"first": items[:1], "evens": nums[::2][:5], "rev": nums[-3:][::-1], "name_tail": items[0]["name"][-2:]}
