def square(number):
    pass


def total():
    pass
