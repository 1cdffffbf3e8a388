# The tally the serve check scripts keep: check() counts a comparison and
# prints it when it fails; finish() prints the counts and exits 1 when any
# check failed. Imported from the scripts' own directory (python3 puts it on
# sys.path).
import sys

passes = fails = 0


def check(name, expected, actual):
    global passes, fails
    if expected == actual:
        passes += 1
    else:
        fails += 1
        print(f"FAIL {name}: expected {expected!r} got {actual!r}")


def finish(script):
    print(f"{script}: {passes} passed, {fails} failed")
    sys.exit(1 if fails else 0)
