for i, c in enumerate(["Paris", "Oslo"]):
    w = get_weather(c)
    print(i, c, w["temp_c"], sep=" | ")
print("end", end="!\n")
None
