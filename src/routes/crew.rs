pub fn crew() {}
