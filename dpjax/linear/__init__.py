"""Linear weak learners over the one-hot binned features."""
