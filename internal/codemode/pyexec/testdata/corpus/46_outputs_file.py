import json, os
w = get_weather("Lima")
with open(os.path.join(OUTPUTS, "lima.json"), "w") as f:
    json.dump(w, f)
sorted(os.listdir(OUTPUTS))
