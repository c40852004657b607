"""The bottom of the house: the run history format, errors and the run context.

Every package may import these; they import nothing of the project.
"""
