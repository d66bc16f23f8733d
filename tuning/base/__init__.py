"""The floor every floor above `runfolder/` may use: the tool's errors, child processes started
without what they do not need, fault injection for the tests, and progress on the console."""
