"""Reading the judge's own answer: fencing and neutralising the judged text, the echo guard, rating, choice and JSON
readers.
"""
