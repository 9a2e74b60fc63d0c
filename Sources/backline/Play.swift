import ArgumentParser
struct Play: ParsableCommand { func run() throws {} }
