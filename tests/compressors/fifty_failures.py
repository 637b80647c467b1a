"""A pytest suite of fifty tests that fail fifty different ways, for the ceiling's tests (engine and real CLI)."""

# Fifty tests, each failing its own way: its own message (a word no other shares), every third deep in a helper.
WORDS = ["anchor", "bridge", "candle", "dragon", "ember", "falcon", "garnet", "harbor", "island", "jasper",
         "kettle", "lantern", "meadow", "nickel", "orchard", "pepper", "quartz", "raven", "saddle", "timber",
         "umber", "velvet", "walnut", "yarrow", "zephyr", "acorn", "basalt", "cedar", "delta", "ferry",
         "glacier", "hollow", "indigo", "juniper", "kelp", "lagoon", "marble", "nectar", "onyx", "pebble",
         "quill", "ridge", "summit", "thistle", "upland", "valley", "willow", "xylem", "yonder", "zinnia"]
FIFTY = """
def helper(depth, word):
    if depth == 0:
        raise ValueError(word + " could not be resolved by the helper")
    return helper(depth - 1, word)
""" + "".join(
    f"\ndef test_{word}():\n    helper({index % 5 + 2}, {word!r})\n" if index % 3 == 0 else
    f"\ndef test_{word}():\n    measured = {{'{word}': {index}}}\n"
    f"    assert measured['{word}'] == {index + 1}, 'the {word} check disagrees'\n"
    for index, word in enumerate(WORDS))
