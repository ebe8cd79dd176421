w = get_weather("Paris")
print(f"{w['city']}: {w['temp_c']}°C, {w['sky']}")
total = 1234.5
f"Total: ${total:,.2f}"
