"""The parallel corpus: built offline from Debian data packages and the project's own sentences, read back for
training.

Real parallel text is scarce on an offline machine, but Debian's data packages hold some. For en-de:

* the Ding dictionary (`ding`): example sentences and phrases inside the entries ("Better late than never." /
  "Besser spät als nie.") — the everyday register, and the only source of dev/test — and a lexicon of common terms;
* LibreOffice help (`libreoffice_help`): the same page in both languages, paragraphs matched by id;
* message catalogs (`catalogs`): user-interface strings of LibreOffice, GIMP and Inkscape, msgid -> msgstr;
* GNOME help (`gnome_help`): Mallard pages of the desktop and of 39 applications, blocks in the same order;
* Debian's package descriptions (`ddtp`), measured and left out of the shipped corpus;
* the project's own authored everyday sentences (`authored`).

The pipeline, one module a step, pure between the first and the last:

    packages   download + extract (apt-get download, dpkg-deb -x); versions and licence files
    sources    the registry: each language pair's sources, read from the extracted tree, one module each
    cleaning   clean and filter (`clean_text`, `reject_reason`), the same for every source
    splitting  deduplicate, cap, split; dev and test never trained on (`make_corpus`)
    tsv        the pairs on disk: write and read .tsv.xz, `load_corpus`
    card       DATA_CARD.md from its template (`DATA_CARD.<pair>.md.j2`) and the measured numbers
    build      all of it, for one pair: `python -m transformer.training.corpus build --out data/en-de --seed 0`
    mix        a corpus for continuing a model: new pairs, repeated, with a replay sample of a built corpus's train
               split and its held-out splits unchanged (`python -m transformer.training.corpus mix --base …`)

Read:

    from transformer.training.corpus.tsv import load_corpus
    corpus = load_corpus("data/en-de")    # {"train": [(english, german), ...], "dev": [...], "test": [...]}

Every pair is (english, german) in en-de: its sides in the order of the language pair's name.
"""
