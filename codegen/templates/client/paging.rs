//! Paged lists: follow `nextCursor` page after page, or item after item. Written by hand
//! (`codegen/templates/client/paging.rs`); the generator gives every operation whose answer
//! carries a `nextCursor` and that takes a `cursor` parameter `pages()` and `stream()`.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use super::transport::excerpt;
use super::{Error, ResponseValue};

type PageFuture<'a, P> = Pin<Box<dyn Future<Output = Result<ResponseValue<P>, Error>> + Send + 'a>>;
/// The fetcher and the page in flight are kept in a `Mutex` only ever reached through
/// `&mut` (`get_mut`, never locked), so that `Pages` and `Items` are `Sync` without asking
/// the future of a call to be.
type Fetch<'a, P> = Mutex<Box<dyn FnMut(Option<String>) -> PageFuture<'a, P> + Send + 'a>>;

/// Every page of a list, in order: the first with the call's own cursor (if any), then each
/// `nextCursor` until a page has none. An error ends the stream after it is yielded; so
/// does a page whose `nextCursor` is the cursor that read it (the page is yielded, then an
/// [`Error::Decode`] saying the host repeated the cursor). Use [`Pages::next`], or the
/// `futures` `Stream` impl.
pub struct Pages<'a, P> {
    fetch: Fetch<'a, P>,
    next_cursor: fn(&P) -> Option<String>,
    /// `None` once the last page (or an error) was yielded.
    cursor: Option<Option<String>>,
    /// The cursor the page in flight, or else the last page yielded, was read with.
    read_with: Option<String>,
    pending: Option<Mutex<PageFuture<'a, P>>>,
    /// A page failed: the listing has ended, `cursor` names that page.
    failed: bool,
    /// The error to yield after the page just yielded (the host repeated its cursor).
    queued: Option<Error>,
}

impl<P> fmt::Debug for Pages<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pages")
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl<'a, P: Send + 'a> Pages<'a, P> {
    pub(crate) fn new(
        first: Option<String>,
        fetch: impl FnMut(Option<String>) -> PageFuture<'a, P> + Send + 'a,
        next_cursor: fn(&P) -> Option<String>,
    ) -> Self {
        Self {
            fetch: Mutex::new(Box::new(fetch)),
            next_cursor,
            cursor: Some(first),
            read_with: None,
            pending: None,
            failed: false,
            queued: None,
        }
    }

    /// The next page; `None` after the last one.
    pub async fn next(&mut self) -> Option<Result<ResponseValue<P>, Error>> {
        std::future::poll_fn(|cx| self.poll_page(cx)).await
    }

    /// The cursor the next page will be read with (`Some(None)`: the first page), or `None`
    /// when there are no more pages: keep it to resume a listing later. After an error the
    /// listing ends, and this names the page that failed (resume with the operation's
    /// `cursor(..)`); after a repeated cursor, it is that cursor (resuming with it reads the
    /// last page yielded again).
    pub fn cursor(&self) -> Option<Option<&str>> {
        self.cursor.as_ref().map(Option::as_deref)
    }

    fn poll_page(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<ResponseValue<P>, Error>>> {
        if let Some(error) = self.queued.take() {
            self.failed = true;
            return Poll::Ready(Some(Err(error)));
        }
        if self.failed {
            return Poll::Ready(None);
        }
        if self.pending.is_none() {
            let Some(cursor) = self.cursor.clone() else {
                return Poll::Ready(None);
            };
            self.read_with.clone_from(&cursor);
            let fetch = self.fetch.get_mut().unwrap_or_else(|e| e.into_inner());
            self.pending = Some(Mutex::new(fetch(cursor)));
        }
        let Some(pending) = self.pending.as_mut() else {
            return Poll::Ready(None);
        };
        let pending = pending.get_mut().unwrap_or_else(|e| e.into_inner());
        let page = match pending.as_mut().poll(cx) {
            Poll::Ready(page) => page,
            Poll::Pending => return Poll::Pending,
        };
        self.pending = None;
        match &page {
            Ok(page) => {
                let next = (self.next_cursor)(page);
                // A host that answers a page with the cursor that read it would be asked
                // for that page forever. AWS SDK paginators stop quietly on a repeated
                // token; this stops with an error instead, since a quiet end could hide
                // items the host lost (a cursor that failed to advance past them). The page
                // itself is yielded first: it is the first answer to that cursor, and a
                // host that echoes its cursor on the last page instead of leaving it out
                // loses nothing. `cursor()` then names the repeated cursor.
                if let Some(repeated) = next
                    .as_ref()
                    .filter(|n| self.read_with.as_deref() == Some(n.as_str()))
                {
                    self.queued = Some(Error::Decode {
                        status: page.status(),
                        message: format!(
                            "the host repeated the cursor `{}` as the next page's: following \
                             it would read the same page again",
                            excerpt(repeated.as_bytes())
                        )
                        .into(),
                        body: Box::default(),
                        headers: Box::new(page.headers().clone()),
                    });
                }
                self.cursor = next.map(Some);
            }
            // The listing ends here, but `cursor()` still names the page that failed, so
            // a later call can resume from it.
            Err(_) => self.failed = true,
        }
        Poll::Ready(Some(page))
    }
}

impl<'a, P: Send + 'a> futures_core::Stream for Pages<'a, P> {
    type Item = Result<ResponseValue<P>, Error>;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_page(cx)
    }
}

/// How many empty pages in a row one [`Items::next`] reads before it answers an error: a
/// host may legitimately answer a page with no item and a cursor (a filtered scan), so such
/// pages are followed, but a host that mints a fresh cursor for every empty page (or cycles
/// through several) would otherwise keep one `next()` asking, unseen, without end. A
/// hundred is far past what a sound host sends in a row, and the error loses nothing: the
/// listing resumes from [`Items::cursor`]. [`Pages`] has no such bound, since it yields
/// every page, empty or not, to its caller.
const MAX_EMPTY_PAGES: usize = 100;

/// Every item of a list across its pages (see [`Pages`]). An error ends the stream after it
/// is yielded; so do 100 empty pages in a row (an [`Error::Decode`]). To resume a listing
/// later without losing an item, keep [`Items::cursor`] and [`Items::yielded_from_page`].
pub struct Items<'a, P, T> {
    pages: Pages<'a, P>,
    items: fn(P) -> Vec<T>,
    buffer: VecDeque<T>,
    /// Items yielded from the page in `buffer`.
    taken: usize,
    /// Empty pages read since the last item.
    empty: usize,
}

impl<P, T> fmt::Debug for Items<'_, P, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Items")
            .field("pages", &self.pages)
            .field("buffered", &self.buffer.len())
            .finish()
    }
}

impl<'a, P: Send + 'a, T: Unpin> Items<'a, P, T> {
    pub(crate) fn new(pages: Pages<'a, P>, items: fn(P) -> Vec<T>) -> Self {
        Self {
            pages,
            items,
            buffer: VecDeque::new(),
            taken: 0,
            empty: 0,
        }
    }

    /// The next item; `None` after the last one of the last page.
    pub async fn next(&mut self) -> Option<Result<T, Error>> {
        std::future::poll_fn(|cx| self.poll_item(cx)).await
    }

    /// The pages underneath. Their [`Pages::cursor`] is the next page not yet read: the
    /// items of the page read last that [`Items::next`] has not yet yielded are before it,
    /// so resuming from it would skip them; resume from [`Items::cursor`] instead.
    pub fn pages(&self) -> &Pages<'a, P> {
        &self.pages
    }

    /// Where to resume this listing without losing an item: the cursor of the page the next
    /// item comes from (`Some(None)`: the first page), or `None` when every item has been
    /// yielded. Resuming with it (the operation's `cursor(..)`) reads that page whole
    /// again: skip its first [`Items::yielded_from_page`] items, yielded already. After an
    /// error it names the page that failed, or the page after the empty ones.
    pub fn cursor(&self) -> Option<Option<&str>> {
        if self.buffer.is_empty() {
            self.pages.cursor()
        } else {
            Some(self.pages.read_with.as_deref())
        }
    }

    /// How many items of the page [`Items::cursor`] names were yielded already (0 when
    /// the next item starts a page).
    pub fn yielded_from_page(&self) -> usize {
        if self.buffer.is_empty() {
            0
        } else {
            self.taken
        }
    }

    fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, Error>>> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                self.taken += 1;
                return Poll::Ready(Some(Ok(item)));
            }
            let page = match self.pages.poll_page(cx) {
                Poll::Ready(Some(Ok(page))) => page,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            };
            let (page, status, headers) = page.into_parts();
            self.buffer.extend((self.items)(page));
            self.taken = 0;
            if !self.buffer.is_empty() {
                self.empty = 0;
                continue;
            }
            self.empty += 1;
            // The last page may be empty; a repeated cursor has its own error, next.
            let more = self.pages.cursor.is_some() && self.pages.queued.is_none();
            if self.empty >= MAX_EMPTY_PAGES && more {
                self.pages.failed = true;
                return Poll::Ready(Some(Err(Error::Decode {
                    status,
                    message: format!(
                        "{} pages in a row held no item; the listing stopped before the \
                         next (resume from `Items::cursor()`)",
                        self.empty
                    )
                    .into(),
                    body: Box::default(),
                    headers: Box::new(headers),
                })));
            }
        }
    }
}

impl<'a, P: Send + 'a, T: Unpin> futures_core::Stream for Items<'a, P, T> {
    type Item = Result<T, Error>;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_item(cx)
    }
}

// `Pages` and `Items` are `Send` and `Sync` (a listing can be held across `.await` in a
// spawned task, and by a struct shared between threads), whatever the future of a call is.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Pages<'static, serde_json::Value>>();
    send_sync::<Items<'static, serde_json::Value, serde_json::Value>>();
};
