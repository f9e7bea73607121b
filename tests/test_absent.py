"""Which names a question asks about, and which of them the documents never mention."""

from pipeline.retrieval.absent import absent_names, asking_sentences, named_terms

MANUAL = {"PgBouncer", "archive_mode", "pg_stat_activity"}


def known(name: str) -> bool:
    return name in MANUAL


def test_names_in_the_asking_sentence_are_judged():
    question = "we're putting PgBouncer in front of the cluster - should pool_mode be session or transaction?"
    assert named_terms(question) == ["PgBouncer", "pool_mode"]
    assert absent_names(question, known) == ["pool_mode"]


def test_the_users_own_names_in_the_scene_before_the_question_are_not():
    # created_at is the user's column: no manual mentions it, and the question asks for an index type.
    question = (
        "huge append-only events table, queries filter on created_at ranges. "
        "is there an index type that stays tiny for this?"
    )
    assert asking_sentences(question) == ["is there an index type that stays tiny for this?"]
    assert absent_names(question, known) == []


def test_an_ellipsis_eliding_syntax_ends_no_sentence():
    question = "with ALTER ROLE ... IN DATABASE and pool_mode set, which one wins in a session?"
    assert asking_sentences(question) == [question]
    assert absent_names(question, known) == ["pool_mode"]


def test_a_scene_name_asked_about_again_is_judged():
    question = "We log into tenant_audit. How do I reset the counters in pg_stat_io? And tenant_audit?"
    assert absent_names(question, known) == ["pg_stat_io", "tenant_audit"]


def test_a_question_without_a_question_mark_asks_throughout():
    assert absent_names("reset the pg_stat_io counters. on PG15", known) == ["pg_stat_io"]


def test_dotted_and_slashed_names_stay_the_users_own():
    question = "why does WHERE customers.email_addr LIKE 'a%' on /srv/app_data ignore the index?"
    assert named_terms(question) == []
