//! Paged lists: follow `nextCursor` page after page, or item after item. Written by hand
//! (`codegen/templates/client/paging.rs`); the generator gives every operation whose answer
//! carries a `nextCursor` and that takes a `cursor` parameter `pages()` and `stream()`.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Error, ResponseValue};

type PageFuture<'a, P> = Pin<Box<dyn Future<Output = Result<ResponseValue<P>, Error>> + Send + 'a>>;
type Fetch<'a, P> = Box<dyn FnMut(Option<String>) -> PageFuture<'a, P> + Send + 'a>;

/// Every page of a list, in order: the first with the call's own cursor (if any), then each
/// `nextCursor` until a page has none. An error ends the stream after it is yielded.
/// Use [`Pages::next`], or the `futures` `Stream` impl.
pub struct Pages<'a, P> {
    fetch: Fetch<'a, P>,
    next_cursor: fn(&P) -> Option<String>,
    /// `None` once the last page (or an error) was yielded.
    cursor: Option<Option<String>>,
    pending: Option<PageFuture<'a, P>>,
    /// A page failed: the listing has ended, `cursor` names that page.
    failed: bool,
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
            fetch: Box::new(fetch),
            next_cursor,
            cursor: Some(first),
            pending: None,
            failed: false,
        }
    }

    /// The next page; `None` after the last one.
    pub async fn next(&mut self) -> Option<Result<ResponseValue<P>, Error>> {
        std::future::poll_fn(|cx| self.poll_page(cx)).await
    }

    /// The cursor the next page will be read with (`Some(None)`: the first page), or `None`
    /// when there are no more pages: keep it to resume a listing later. After an error the
    /// listing ends, and this names the page that failed (resume with the operation's
    /// `cursor(..)`).
    pub fn cursor(&self) -> Option<Option<&str>> {
        self.cursor.as_ref().map(Option::as_deref)
    }

    fn poll_page(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<ResponseValue<P>, Error>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        if self.pending.is_none() {
            let Some(cursor) = self.cursor.clone() else {
                return Poll::Ready(None);
            };
            self.pending = Some((self.fetch)(cursor));
        }
        let Some(pending) = self.pending.as_mut() else {
            return Poll::Ready(None);
        };
        let page = match pending.as_mut().poll(cx) {
            Poll::Ready(page) => page,
            Poll::Pending => return Poll::Pending,
        };
        self.pending = None;
        match &page {
            Ok(page) => self.cursor = (self.next_cursor)(page).map(Some),
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

/// Every item of a list across its pages (see [`Pages`]).
pub struct Items<'a, P, T> {
    pages: Pages<'a, P>,
    items: fn(P) -> Vec<T>,
    buffer: VecDeque<T>,
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
        }
    }

    /// The next item; `None` after the last one of the last page.
    pub async fn next(&mut self) -> Option<Result<T, Error>> {
        std::future::poll_fn(|cx| self.poll_item(cx)).await
    }

    /// The pages underneath (their cursor).
    pub fn pages(&self) -> &Pages<'a, P> {
        &self.pages
    }

    fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, Error>>> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Poll::Ready(Some(Ok(item)));
            }
            match self.pages.poll_page(cx) {
                Poll::Ready(Some(Ok(page))) => self.buffer.extend((self.items)(page.into_inner())),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
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
