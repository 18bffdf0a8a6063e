//! Elements found by their id without a copy of it: a hash table of the elements' keys,
//! each found by the id's hash and a comparison with the element's own id. A map from
//! id strings held a second copy of every id, an allocation per part and per joint
//! that a large assembly made, read and freed one by one.
//!
//! Architecture invariant: an element's id does not change while it is in the
//! assembly (the ids are the hash's input).

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// The keys of an assembly's elements of one kind, found by id. `id_of` gives an
/// element's id from its key (`None` for a key no longer there: never asked).
#[derive(Debug, Clone, Default)]
pub(crate) struct IdIndex<K> {
    table: HashTable<K>,
}

fn hash(id: &str) -> u64 {
    FxBuildHasher.hash_one(id)
}

impl<K: Copy + PartialEq> IdIndex<K> {
    /// The key of the element with id `id`.
    pub(crate) fn get<'e>(&self, id: &str, id_of: impl Fn(K) -> Option<&'e str>) -> Option<K> {
        self.table
            .find(hash(id), |&k| id_of(k) == Some(id))
            .copied()
    }

    /// Adds `key`, whose element has id `id` (not in the index yet).
    pub(crate) fn insert<'e>(&mut self, id: &str, key: K, id_of: impl Fn(K) -> Option<&'e str>) {
        self.table
            .insert_unique(hash(id), key, |&k| hash(id_of(k).unwrap_or("")));
    }

    /// Takes out `key`, whose element had id `id`.
    pub(crate) fn remove(&mut self, id: &str, key: K) {
        if let Ok(entry) = self.table.find_entry(hash(id), |&k| k == key) {
            entry.remove();
        }
    }

    /// Room for `more` elements.
    pub(crate) fn reserve<'e>(&mut self, more: usize, id_of: impl Fn(K) -> Option<&'e str>) {
        self.table.reserve(more, |&k| hash(id_of(k).unwrap_or("")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys are found by id through growth, removal and ids that share a prefix.
    #[test]
    fn keys_are_found_by_their_elements_ids() {
        let ids: Vec<String> = (0..200).map(|k| format!("part{k}")).collect();
        let id_of = |k: usize| ids.get(k).map(String::as_str);
        let mut index = IdIndex::default();
        index.reserve(10, id_of);
        for (k, id) in ids.iter().enumerate() {
            index.insert(id, k, id_of);
        }
        assert_eq!(index.get("part17", id_of), Some(17));
        assert_eq!(index.get("part1", id_of), Some(1));
        assert_eq!(index.get("part", id_of), None);
        index.remove("part17", 17);
        assert_eq!(index.get("part17", id_of), None);
        assert_eq!(index.get("part170", id_of), Some(170));
    }
}
