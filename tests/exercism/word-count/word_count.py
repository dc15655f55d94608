def count_words(sentence):
    pass
