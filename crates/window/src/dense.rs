//! A map from short byte-string keys (call ids, tool names, stage ids) to small values, laid
//! out for the cold path: the entries live in one dense list, appended in the order their keys
//! first arrive, and the hash table over them holds only 8-byte slots (the entry's position and
//! seven bits of its hash).
//!
//! Why not a `HashMap`: a bulk load inserts one new call id per call, and a `HashMap` writes
//! the key and value into a bucket at a random place in a table sized for every call (88-byte
//! buckets, about 720 KB at 10k messages), so every insertion paid a cache miss. Here the
//! random write is 8 bytes into a table an eighth of that size, and the entry itself goes to
//! the end of the list, next to the one written before it. A lookup reads its slot's tag and
//! touches an entry only when the tag matches, so probing past other keys costs no entry
//! read either.
//!
//! The table is open addressing with linear probing, kept at most 5/8 full, and a removal
//! shifts the slots after it back (no tombstones), so a probe always ends at an empty slot. A
//! removed entry's place in the list is taken by the last entry. Nothing iterates the map, so
//! neither order is ever observable; the hash has a fixed seed ([`key_hash`]).
//!
//! A `hashbrown::HashTable` over the same dense list would do as well, but the window crate
//! links only its allowlist (`cargo xtask deps`), and this is about a hundred lines.

use crate::scan::key_hash;

/// The longest key kept inline in its entry; the APIs' call ids (`toolu_…`, `call_…`) are
/// about thirty bytes, tool names and stage ids shorter.
const INLINE: usize = 32;

/// A key's bytes: inline up to [`INLINE`] bytes, so a bulk load does not allocate one per
/// call; longer keys live on the heap.
#[derive(Clone)]
enum Key {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

/// Copies `key` (at most [`INLINE`] bytes) into a zeroed buffer in at most two fixed-size
/// moves (overlapping when the key is not a piece's length), which compile to plain loads
/// and stores instead of a call to `memcpy` with a variable length.
#[inline(always)]
fn pieces(key: &[u8]) -> [u8; INLINE] {
    let mut out = [0u8; INLINE];
    let len = key.len().min(INLINE);
    let key = &key[..len];
    if len >= 16 {
        out[..16].copy_from_slice(&key[..16]);
        out[len - 16..len].copy_from_slice(&key[len - 16..]);
    } else if len >= 8 {
        out[..8].copy_from_slice(&key[..8]);
        out[len - 8..len].copy_from_slice(&key[len - 8..]);
    } else if len >= 4 {
        out[..4].copy_from_slice(&key[..4]);
        out[len - 4..len].copy_from_slice(&key[len - 4..]);
    } else {
        for (to, from) in out.iter_mut().zip(key) {
            *to = *from;
        }
    }
    out
}

/// Whether `stored` (an inline key's buffer) begins with exactly `key`, of the same length:
/// the same pieces [`pieces`] copies, compared as words, which between them cover every
/// byte of the key.
#[inline(always)]
fn same_pieces(stored: &[u8; INLINE], key: &[u8]) -> bool {
    let len = key.len();
    if len > INLINE {
        return false;
    }
    let stored = &stored[..len];
    if len >= 16 {
        stored[..16] == key[..16] && stored[len - 16..] == key[len - 16..]
    } else if len >= 8 {
        stored[..8] == key[..8] && stored[len - 8..] == key[len - 8..]
    } else if len >= 4 {
        stored[..4] == key[..4] && stored[len - 4..] == key[len - 4..]
    } else {
        stored == key
    }
}

impl Key {
    #[inline]
    fn new(key: &[u8]) -> Self {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE => Key::Inline {
                len,
                bytes: pieces(key),
            },
            _ => Key::Heap(key.into()),
        }
    }

    /// Whether this key holds exactly `key`'s bytes.
    #[inline(always)]
    fn is(&self, key: &[u8]) -> bool {
        match self {
            Key::Inline { len, bytes } => usize::from(*len) == key.len() && same_pieces(bytes, key),
            Key::Heap(bytes) => **bytes == *key,
        }
    }
}

#[derive(Clone)]
struct Entry<V> {
    hash: u64,
    key: Key,
    value: V,
}

/// The bits of a slot holding the tag; the rest hold the entry's position plus one, so an
/// empty slot is zero.
const TAG_BITS: u32 = 7;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

/// The seven hash bits a slot keeps to skip other keys without reading their entries. The
/// slot's position comes from the low bits, the tag from the high ones, so the two are
/// independent.
#[inline(always)]
fn tag(hash: u64) -> u64 {
    hash >> (64 - TAG_BITS)
}

/// The slot for the entry at `entry`.
#[inline(always)]
fn slot(entry: usize, hash: u64) -> u64 {
    // A list of entries holds fewer than 2^57 of them (its bytes stay below `isize::MAX` and
    // an entry is larger than 64 bytes), so the position plus one shifted by seven bits cannot
    // lose a bit; the shift says `wrapping` only because it cannot overflow.
    ((entry as u64).wrapping_add(1)).wrapping_shl(TAG_BITS) | tag(hash)
}

/// The entry position a full slot points at.
#[inline(always)]
fn entry_of(slot: u64) -> usize {
    // Full slots are at least 1 << TAG_BITS, so the subtraction cannot wrap.
    ((slot >> TAG_BITS).wrapping_sub(1)) as usize
}

/// Whether a table of `slots` slots holding `keys` keys is fuller than five eighths, past
/// which linear probing's runs grow long. The table always keeps an empty slot, so every
/// probe ends.
#[inline(always)]
fn too_full(keys: usize, slots: usize) -> bool {
    keys.saturating_mul(8) > slots.saturating_mul(5)
}

/// The map; see the module documentation.
#[derive(Clone)]
pub(crate) struct DenseMap<V> {
    /// A power of two in length (or empty), at most five eighths of it full.
    slots: Vec<u64>,
    entries: Vec<Entry<V>>,
}

impl<V> Default for DenseMap<V> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            entries: Vec::new(),
        }
    }
}

/// Where a key was found: its slot and its entry.
#[derive(Debug, Clone, Copy)]
struct Found {
    slot: usize,
    entry: usize,
}

impl<V> DenseMap<V> {
    /// How many keys the map holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Makes room for `additional` more keys, so inserting them rehashes nothing.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.entries.reserve(additional);
        let wanted = self.entries.len().saturating_add(additional);
        if too_full(wanted, self.slots.len()) {
            self.grow(wanted);
        }
    }

    /// Resizes the table for `keys` keys at most five eighths full, and re-slots every entry.
    #[cold]
    fn grow(&mut self, keys: usize) {
        // At least 8 slots; past `usize::MAX / 2` the allocation below fails anyway, as a
        // `HashMap` reserving as much does.
        let len = (keys.saturating_mul(8) / 5)
            .saturating_add(1)
            .max(8)
            .checked_next_power_of_two()
            .unwrap_or(1 << (usize::BITS - 1));
        self.slots.clear();
        self.slots.resize(len, 0);
        let mask = len - 1;
        for (index, entry) in self.entries.iter().enumerate() {
            let mut at = entry.hash as usize & mask;
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot(index, entry.hash);
        }
    }

    #[inline]
    fn find(&self, hash: u64, key: &[u8]) -> Option<Found> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let tag = tag(hash);
        let mut at = hash as usize & mask;
        loop {
            let here = self.slots[at];
            if here == 0 {
                return None;
            }
            if here & TAG_MASK == tag {
                let entry = entry_of(here);
                if let Some(candidate) = self.entries.get(entry) {
                    if candidate.hash == hash && candidate.key.is(key) {
                        return Some(Found { slot: at, entry });
                    }
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The value under `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        let found = self.find(key_hash(key), key)?;
        self.entries.get(found.entry).map(|entry| &entry.value)
    }

    /// The position in the list of the entry under `key`, inserting `make()` at the end of
    /// the list when there is none; and whether it was inserted. The key is hashed once.
    #[inline]
    pub(crate) fn position_or_insert_with(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> V,
    ) -> (usize, bool) {
        let hash = key_hash(key);
        if let Some(found) = self.find(hash, key) {
            return (found.entry, false);
        }
        if too_full(self.entries.len().saturating_add(1), self.slots.len()) {
            self.grow(self.entries.len().saturating_add(1).saturating_mul(2));
        }
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        while self.slots[at] != 0 {
            at = (at + 1) & mask;
        }
        let entry = self.entries.len();
        self.slots[at] = slot(entry, hash);
        self.entries.push(Entry {
            hash,
            key: Key::new(key),
            value: make(),
        });
        (entry, true)
    }

    /// The value under `key`, inserting `make()` when there is none.
    #[inline]
    pub(crate) fn get_or_insert_with(&mut self, key: &[u8], make: impl FnOnce() -> V) -> &mut V {
        let (entry, _) = self.position_or_insert_with(key, make);
        // The position was just found or pushed, so it is in the list.
        &mut self.entries[entry].value
    }

    /// Changes the value under `key` with `change`, and removes the entry when `change` says
    /// so; `None` when the map holds no such key. The key is looked up once.
    pub(crate) fn update_or_remove<R>(
        &mut self,
        key: &[u8],
        change: impl FnOnce(&mut V) -> (R, bool),
    ) -> Option<R> {
        let found = self.find(key_hash(key), key)?;
        let entry = self.entries.get_mut(found.entry)?;
        let (out, remove) = change(&mut entry.value);
        if remove {
            self.remove_found(found);
        }
        Some(out)
    }

    /// Removes the entry `found` points at: the slots after its slot shift back over it, and
    /// the last entry of the list takes its place there.
    fn remove_found(&mut self, found: Found) {
        let mask = self.slots.len() - 1;
        // Backward-shift deletion: every slot of the run after the hole that would be found
        // from its home position across the hole moves into it.
        let mut hole = found.slot;
        let mut at = (hole + 1) & mask;
        loop {
            let here = self.slots[at];
            if here == 0 {
                break;
            }
            let home = self
                .entries
                .get(entry_of(here))
                .map_or(at, |entry| entry.hash as usize & mask);
            // The distance from home to `at` and from home to the hole, around the table.
            let from_home = at.wrapping_sub(home) & mask;
            let to_hole = hole.wrapping_sub(home) & mask;
            if to_hole < from_home {
                self.slots[hole] = here;
                hole = at;
            }
            at = (at + 1) & mask;
        }
        self.slots[hole] = 0;
        let last = self.entries.len() - 1;
        if found.entry != last {
            // The last entry moves into the removed one's place: its slot follows it.
            let moved = self.entries[last].hash;
            let mut at = moved as usize & mask;
            while self.slots[at] != 0 && entry_of(self.slots[at]) != last {
                at = (at + 1) & mask;
            }
            if self.slots[at] != 0 {
                self.slots[at] = slot(found.entry, moved);
            }
        }
        self.entries.swap_remove(found.entry);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// One operation on the map: the key is drawn from a small set, so keys repeat, collide
    /// in their slots and leave and come back.
    #[derive(Debug, Clone)]
    enum Op {
        Insert(usize, u32),
        Get(usize),
        Bump(usize),
        Remove(usize),
        Reserve(usize),
    }

    /// Keys of every length class: empty, under 8, 8–16, 17–32 (inline), over 32 (heap), and
    /// pairs that differ only in one byte or in length.
    fn keys() -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = vec![Vec::new(), b"\0".to_vec(), b"\0\0".to_vec()];
        for len in [1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 64] {
            for variant in 0..4u8 {
                let mut key: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                if let Some(last) = key.last_mut() {
                    *last = b'0' + variant;
                }
                keys.push(key);
            }
        }
        for id in 0..40 {
            keys.push(format!("call_{id}").into_bytes());
        }
        keys
    }

    fn op() -> impl Strategy<Value = Op> {
        let key = 0usize..100;
        prop_oneof![
            4 => (key.clone(), any::<u32>()).prop_map(|(key, value)| Op::Insert(key, value)),
            3 => key.clone().prop_map(Op::Get),
            2 => key.clone().prop_map(Op::Bump),
            3 => key.prop_map(Op::Remove),
            1 => (0usize..50).prop_map(Op::Reserve),
        ]
    }

    proptest! {
        /// The dense map answers every operation as a plain map (`BTreeMap`) does.
        #[test]
        fn agrees_with_a_hash_map(ops in prop::collection::vec(op(), 0..400)) {
            let keys = keys();
            let key = |index: usize| keys[index % keys.len()].as_slice();
            let mut map: DenseMap<u32> = DenseMap::default();
            let mut model: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(index, value) => {
                        let k = key(index);
                        let existed = model.contains_key(k);
                        let (_, inserted) = map.position_or_insert_with(k, || value);
                        prop_assert_eq!(inserted, !existed);
                        model.entry(k.to_vec()).or_insert(value);
                    }
                    Op::Get(index) => {
                        prop_assert_eq!(map.get(key(index)), model.get(key(index)));
                    }
                    Op::Bump(index) => {
                        let k = key(index);
                        let value = map.get_or_insert_with(k, || 0);
                        *value = value.wrapping_add(1);
                        let expected = model.entry(k.to_vec()).or_insert(0);
                        *expected = expected.wrapping_add(1);
                        prop_assert_eq!(map.get(k), Some(&*expected));
                    }
                    Op::Remove(index) => {
                        let k = key(index);
                        let removed = map.update_or_remove(k, |value| (*value, true));
                        prop_assert_eq!(removed, model.remove(k));
                    }
                    Op::Reserve(additional) => map.reserve(additional),
                }
                prop_assert_eq!(map.len(), model.len());
            }
            for (index, k) in keys.iter().enumerate() {
                prop_assert_eq!(map.get(k), model.get(k.as_slice()), "key {}", index);
            }
        }
    }

    #[test]
    fn inserts_finds_and_removes() {
        let mut map: DenseMap<u32> = DenseMap::default();
        let long = "k".repeat(INLINE + 5);
        for (index, key) in ["a", "", "call_1", long.as_str()].iter().enumerate() {
            let (position, inserted) = map.position_or_insert_with(key.as_bytes(), || index as u32);
            assert_eq!((position, inserted), (index, true));
        }
        assert_eq!(map.get(long.as_bytes()), Some(&3));
        assert_eq!(map.get(b""), Some(&1));
        assert_eq!(map.position_or_insert_with(b"a", || 9), (0, false));
        assert_eq!(map.update_or_remove(b"a", |value| (*value, true)), Some(0));
        assert_eq!(map.get(b"a"), None);
        assert_eq!(map.get(long.as_bytes()), Some(&3));
        assert_eq!(map.len(), 3);
        assert_eq!(map.update_or_remove(b"a", |value| (*value, true)), None);
    }
}
