# Shortcuts for people who type make; tasks.py does the work and needs nothing but Python.
.PHONY: lab test
lab test:
	python3 tasks.py $@
