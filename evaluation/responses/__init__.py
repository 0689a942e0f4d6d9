"""Answers of RAG systems (sentences, citations), their nugget and citation-support scores, response leaderboards."""
