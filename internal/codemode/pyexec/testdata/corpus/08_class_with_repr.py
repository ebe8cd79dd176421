class Temp:
    def __init__(self, city, c):
        self.city, self.c = city, c
    @property
    def f(self):
        return self.c * 9 / 5 + 32
    def __repr__(self):
        return f"Temp({self.city!r}, {self.c})"

ts = [Temp(c, get_weather(c)["temp_c"]) for c in ["Paris", "Oslo"]]
print(ts)
[t.f for t in ts]
