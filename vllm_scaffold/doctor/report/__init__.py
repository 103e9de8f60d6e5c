"""What doctor says: the findings (`findings`), the code registry (`codes`, over `codes.toml`), the table
and JSON (`render`) and suppression comments (`suppress`).
"""
