"""Acting on history: guarded ref operations (rollback, branches, tags, cherry-pick, WAP).

Spec "Snapshot References" and "Commit Conflict Resolution and Retry": every operation is one
guarded commit whose requirements (``assert-ref-snapshot-id`` on each ref it moves,
``assert-table-uuid``) make a lost update impossible; each can be previewed (a dry run) first.
"""
