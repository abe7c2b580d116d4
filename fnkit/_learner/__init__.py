"""What the learner's tools share (the widgets and the workshop): errors in plain words (`plain`)
and small, deterministic emails for the mail exercises and the mail widget (`emails`)."""
