"""Server-rendered pages: sign in, upload a trace, create a cluster, run and watch experiments."""
