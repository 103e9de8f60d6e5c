"""The terminal layer: everything the tool shows and asks on a terminal, and nothing else.

`console` prints (rich, word-wrapped to the terminal); `prompts` asks questions and stands in for copier's
questionary while a template's questions are asked; `seam_picker` is the seam list; `guided` is what `new`
and `add` ask when SEAM or NAME is left out. The command modules in `cli/` call it; nothing in `generate/`,
`doctor/` or the cores imports it, except doctor's table renderer, which prints through `console`.
"""
