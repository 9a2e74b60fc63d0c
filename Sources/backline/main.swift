print("backline")
