"""An exercise as data: its folder, its case files, their schema and the bounded YAML reader."""
